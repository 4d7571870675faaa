// The layers of the workspace as a tree built from their dotted names (decoder > layers > 7 > mlp >
// linear_fc2), children in depth order (layer 2 before layer 10), and under each layer its tensor kinds.
#pragma once

#include <QAbstractItemModel>
#include <QHash>
#include <QSet>

#include <memory>
#include <vector>

namespace fp8scope {

class LayerTreeModel : public QAbstractItemModel
{
    Q_OBJECT
public:
    enum Column { NameColumn, ColumnCount };
    enum Role {
        LayerRole = Qt::UserRole + 1, // full dotted layer name; empty for nodes above a layer
        TensorRole, // tensor kind; empty unless the node is a tensor
        PathRole, // dotted path of the node (what the filter matches)
    };

    explicit LayerTreeModel(QObject *parent = nullptr);
    ~LayerTreeModel() override;

    // Layers in depth order, each with its tensor kinds.
    void setLayers(const std::vector<std::pair<QString, QStringList>> &layers);
    // The layers that ran in high precision for the whole run (of the run the window shows), with what says so:
    // marked "BF16" beside their names, the source on hover.
    void setHighPrecision(const QHash<QString, QString> &layers);
    // The index of a layer (tensor empty) or of one of its tensors; invalid when absent.
    QModelIndex find(const QString &layer, const QString &tensor = QString()) const;

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    struct Node;
    Node *nodeOf(const QModelIndex &index) const;
    QModelIndex indexOf(Node *node) const;

    std::unique_ptr<Node> m_root;
    QHash<QString, QString> m_highPrecision;
    QSet<const Node *> m_bf16Nodes; // nodes above layers whose layers are all in BF16
};

} // namespace fp8scope
